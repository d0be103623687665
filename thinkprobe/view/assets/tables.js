// thinkprobe report table page: the filter box and the sortable headers (templates/table_page.html.j2).
(function(){
  var t=document.querySelector('table.data'), body=t.tBodies[0], rows=[].slice.call(body.rows);
  var box=document.getElementById('filter'), count=document.getElementById('count');
  function apply(){
    var words=box.value.toLowerCase().split(/\s+/).filter(Boolean), n=0;
    rows.forEach(function(r){
      var text=r.textContent.toLowerCase(), show=words.every(function(w){return text.indexOf(w)>=0;});
      r.style.display=show?'':'none'; if(show) n++;
    });
    count.textContent=n+' of '+rows.length+' rows';
  }
  box.addEventListener('input',apply);
  [].forEach.call(t.tHead.rows[0].cells,function(th,col){
    th.addEventListener('click',function(){
      var dir=th.getAttribute('data-dir')==='asc'?-1:1;
      [].forEach.call(t.tHead.rows[0].cells,function(h){h.removeAttribute('data-dir');});
      th.setAttribute('data-dir',dir>0?'asc':'desc');
      rows.sort(function(a,b){
        var x=a.cells[col].getAttribute('data-v'), y=b.cells[col].getAttribute('data-v');
        if(x===null) x=a.cells[col].textContent; if(y===null) y=b.cells[col].textContent;
        var nx=parseFloat(x), ny=parseFloat(y);
        if(!isNaN(nx)&&!isNaN(ny)) return dir*(nx-ny);
        if(isNaN(nx)!==isNaN(ny)) return isNaN(nx)?1:-1;
        return dir*x.localeCompare(y);
      });
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
  apply();
})();
